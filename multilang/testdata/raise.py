# A multilang bolt that answers the handshake and, at its first tuple,
# raises a chained exception (test of the traceback assembly).
import json
import os
import sys


def read_message():
    lines = []
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(2)
        if line == "end\n":
            return json.loads("".join(lines))
        lines.append(line)


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\nend\n")
    sys.stdout.flush()


def split(sentence):
    return int(sentence)


setup = read_message()
open(os.path.join(setup["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
print("a line before the traceback", file=sys.stderr, flush=True)
tup = read_message()
try:
    split(tup["tuple"][0])
except ValueError as e:
    raise RuntimeError("cannot split " + repr(tup["tuple"][0])) from e
