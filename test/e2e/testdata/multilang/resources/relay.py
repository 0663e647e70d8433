"""The relay bolt of the ackcheck topology as a pystorm bolt.

It passes (id, copy) on, anchored on its input, and acks the input, like
the Go RelayBolt. Settings (topology config, read from the handshake):

  ackcheck.relay.fail.every  N   fail the tuples with (3*id + copy) % N == 0,
                                 once each per process (they are replayed)
  ackcheck.relay.fault       garbage | hang | exit
                                 once per topology (a marker file in the state
                                 directory), after ackcheck.relay.fault.after
                                 tuples: write a line that is not a multilang
                                 message to stdout, stop answering, or exit 3
"""
import os
import sys
import time

from pystorm import Bolt


class RelayBolt(Bolt):
    auto_ack = False

    def initialize(self, conf, context):
        self.fail_every = int(conf.get("ackcheck.relay.fail.every", 0))
        self.fault = conf.get("ackcheck.relay.fault", "")
        self.fault_after = int(conf.get("ackcheck.relay.fault.after", 1000))
        self.state = conf.get("ackcheck.state.dir", "")
        self.failed = set()
        self.seen = 0

    def first_fault(self):
        marker = os.path.join(self.state, "fault-" + self.fault)
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            return False

    def process(self, tup):
        id_, copy = tup.values
        self.seen += 1
        if self.fault and self.seen == self.fault_after and self.first_fault():
            if self.fault == "garbage":
                os.write(1, b"Traceback? no: this line is not a multilang message\nend\n")
            elif self.fault == "hang":
                while True:
                    time.sleep(3600)
            else:
                sys.stderr.write("relay.py: exiting on purpose\n")
                os._exit(3)
        if self.fail_every and (3 * id_ + copy) % self.fail_every == 0 and (id_, copy) not in self.failed:
            self.failed.add((id_, copy))
            self.fail(tup)
            return
        self.emit([id_, copy])
        self.ack(tup)


if __name__ == "__main__":
    RelayBolt().run()
