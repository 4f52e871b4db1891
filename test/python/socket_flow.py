"""What a Python client of the device socket does, with python-socketio (nobody here wrote it) and
requests: a phone signs in with the code texted to it, connects with B and makes a room with them;
both connect over WebSocket; B posts over REST and the phone's socket gets message.new; typing is
relayed; hub.ping is acknowledged with its body; device events missed while disconnected are replayed
after the lastSeq given (as a decimal string, as Android sends it), and not before it; signing out
closes the socket. Prints one JSON line of what it saw.

Usage: socket_flow.py <api base URL> <hub URL> <SMS outbox file> <phone> <b token> <b id> <c token> <d token>
"""
import json
import queue
import sys
import threading

import requests
import socketio

from sms_outbox import last_code

API, HUB, OUTBOX, PHONE = sys.argv[1:5]
B_TOKEN, B_ID, C_TOKEN, D_TOKEN = sys.argv[5:9]
WAIT = 10


class Phone:
    """One device's socket: every event it gets goes to a queue, as a phone app's handler would see it."""

    def __init__(self, token: str):
        self.token = token
        self.events: "queue.Queue[tuple[str, object]]" = queue.Queue()
        self.seen: list[tuple[str, object]] = []
        self.sio = socketio.Client(reconnection=False)
        self.sio.on("*", self._any)

    def _any(self, event, data):
        self.events.put((event, data))

    def connect(self, last_seq=None):
        auth = {"token": self.token}
        if last_seq is not None:
            auth["lastSeq"] = last_seq
        # Only WebSocket is accepted: the default (long-polling first) is refused.
        self.sio.connect(HUB, socketio_path="socket.io", transports=["websocket"], auth=auth, wait_timeout=WAIT)

    def next(self, event: str, match=lambda data: True):
        """The next event of this name that matches, skipping (and keeping) others."""
        while True:
            name, data = self.events.get(timeout=WAIT)
            self.seen.append((name, data))
            if name == event and match(data):
                return data

    def disconnect(self):
        self.sio.disconnect()


def rest(method: str, path: str, token: str, body=None):
    answer = requests.request(method, API + path, json=body, headers={"Authorization": "Bearer " + token}, timeout=WAIT)
    if answer.status_code >= 300:
        raise RuntimeError(f"{method} {path} answered {answer.status_code}: {answer.text}")
    return answer.json() if answer.content else None


# Sign-in as a phone does it: a code texted to the number, then the login with this device.
sent = requests.post(API + "/api/auth/code", json={"phone": PHONE}, timeout=WAIT)
assert sent.status_code == 204, sent.text
login = requests.post(API + "/api/auth/login", json={"phone": PHONE, "code": last_code(OUTBOX, PHONE), "device": {"name": "Python phone", "platform": "ANDROID"}}, timeout=WAIT).json()
A_TOKEN, A_ID = login["accessToken"], login["userId"]

# Connected to B (B accepts the request), then a room with B in it.
rest("POST", f"/api/users/connection-requests?recipientId={B_ID}", A_TOKEN)
incoming = rest("GET", "/api/users/connection-requests", B_TOKEN)["items"]
request_id = next(r["id"] for r in incoming if r["sender"]["id"] == A_ID and r["status"] == "PENDING")
rest("POST", f"/api/users/connection-requests/incoming/{request_id}?accept=true", B_TOKEN)
ROOM = rest("POST", "/api/rooms", A_TOKEN, {"type": "PRIVATE_GROUP", "name": "Python sockets", "memberIds": [B_ID]})["id"]

a, b = Phone(A_TOKEN), Phone(B_TOKEN)
a.connect(last_seq=0)
b.connect()

# A message posted over REST reaches the other member's socket.
message_id = rest("PUT", f"/api/messages/{ROOM}", B_TOKEN, {"roomId": ROOM, "message": "Hello from python-socketio"})
posted = a.next("message.new", lambda data: data.get("messageId") == message_id)

# Typing is relayed to the room's other members.
a.sio.emit("typing.start", {"roomId": ROOM})
typing = b.next("typing.start")

# hub.ping's acknowledgement echoes its body.
echo = a.sio.call("hub.ping", {"n": 7}, timeout=WAIT)

# A device event while connected, then one while away.
rest("POST", f"/api/users/connection-requests?recipientId={A_ID}", C_TOKEN)
first = a.next("contact.request")
a.sio.emit("inbox.ack", {"seq": first["seq"]})
a.disconnect()
b.disconnect()
rest("POST", f"/api/users/connection-requests?recipientId={A_ID}", D_TOKEN)

# Reconnecting with lastSeq as a string: only what came after it is replayed.
again = Phone(A_TOKEN)
again.connect(last_seq=str(first["seq"]))
replayed = again.next("contact.request")
try:
    extra = again.events.get(timeout=1)
except queue.Empty:
    extra = None

# Signing out revokes the device: the hub closes its socket.
closed = threading.Event()
again.sio.on("disconnect", lambda *args: closed.set())
rest("POST", "/api/auth/logout", A_TOKEN)
signed_out = closed.wait(WAIT)

print(json.dumps({
    "userId": A_ID,
    "roomId": ROOM,
    "signedOut": signed_out,
    "messageNew": {"messageId": posted.get("messageId"), "message": posted.get("message"), "roomId": posted.get("roomId")},
    "typing": typing,
    "echo": echo,
    "first": {"seq": first["seq"], "sender": first["data"]["sender"]},
    "replayed": {"seq": replayed["seq"], "sender": replayed["data"]["sender"]},
    "extra": extra,
    "threads": threading.active_count(),
}))
