"""The newest code texted to a phone, read from the development SMS outbox (one JSON line per SMS),
as a phone would read its SMS: shared by the Python flows."""
import json
import time


def last_code(outbox: str, phone: str) -> str:
    for _ in range(50):
        with open(outbox, encoding="utf-8") as lines:
            # complete lines only: another text may be half-written while this reads
            records = [json.loads(line) for line in lines if line.endswith("\n") and line.strip()]
        mine = [record for record in records if record["to"] == phone]
        if mine:
            return mine[-1]["code"]
        time.sleep(0.1)
    raise RuntimeError("no code was texted")
