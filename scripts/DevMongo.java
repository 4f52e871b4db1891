// Launches mongo-java-server for development, the embedded default and tests.
// Run as a single-file program: java -cp '<cache>/lib/*' scripts/DevMongo.java --port N [--h2 FILE]
// It prints "LISTENING <port>" once bound and exits when its standard input closes, so it never
// outlives the script that started it.
import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

public class DevMongo {
    public static void main(String[] args) throws Exception {
        String host = "127.0.0.1";
        int port = 0;
        String h2File = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--host" -> host = args[++i];
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--h2" -> h2File = args[++i];
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        MongoBackend backend = h2File == null ? new MemoryBackend() : new H2Backend(h2File);
        MongoServer server = new MongoServer(backend);
        server.bind(host, port);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.shutdown();
            backend.close();
        }));
        System.out.println("LISTENING " + server.getLocalAddress().getPort());
        System.out.flush();
        while (System.in.read() != -1) {
            // wait for the parent to go away
        }
        System.exit(0);
    }
}
