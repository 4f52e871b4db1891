"""What a Python client of the device socket does, with python-socketio (nobody here wrote it) and
requests: two members of a room connect over WebSocket, one posts over REST and the other's socket
gets message.new; typing is relayed; hub.ping is acknowledged with its body; device events missed
while disconnected are replayed after the lastSeq given (as a decimal string, as Android sends it),
and not before it. Prints one JSON line of what it saw.

Usage: socket_flow.py <api base URL> <hub URL> <room id> <a token> <a id> <b token> <c token> <d token>
"""
import json
import queue
import sys
import threading

import requests
import socketio

API, HUB, ROOM = sys.argv[1], sys.argv[2], sys.argv[3]
A_TOKEN, A_ID, B_TOKEN, C_TOKEN, D_TOKEN = sys.argv[4:9]
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
again.disconnect()

print(json.dumps({
    "messageNew": {"messageId": posted.get("messageId"), "message": posted.get("message"), "roomId": posted.get("roomId")},
    "typing": typing,
    "echo": echo,
    "first": {"seq": first["seq"], "sender": first["data"]["sender"]},
    "replayed": {"seq": replayed["seq"], "sender": replayed["data"]["sender"]},
    "extra": extra,
    "threads": threading.active_count(),
}))
