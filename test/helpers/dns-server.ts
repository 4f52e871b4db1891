import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';

/**
 * A DNS server for tests (UDP, on 127.0.0.1): answers A queries for the given names with the given
 * IPv4 addresses, and everything else with no answer, as an attacker's name server might.
 */
export async function startDnsServer(answers: Record<string, string>): Promise<{ address: string; close(): Promise<void> }> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (query, from) => {
    let offset = 12;
    const labels: string[] = [];
    while (offset < query.length && query[offset] !== 0) {
      const length = query[offset]!;
      labels.push(query.subarray(offset + 1, offset + 1 + length).toString('latin1'));
      offset += length + 1;
    }
    const questionEnd = offset + 5;
    const type = query.readUInt16BE(offset + 1);
    const ip = answers[labels.join('.').toLowerCase()];
    // The answer points back at the question's name (0xc00c): type A, class IN, 60 s, 4 bytes.
    const answer = type === 1 && ip ? Buffer.concat([Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]), Buffer.from(ip.split('.').map(Number))]) : Buffer.alloc(0);
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    header.writeUInt16BE(0x8180, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answer.length > 0 ? 1 : 0, 6);
    socket.send(Buffer.concat([header, query.subarray(12, questionEnd), answer]), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(socket.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
