"""The split bolt of the pysplit test topology, with pystorm: one (word,)
tuple per word of the sentence, after the topology setting
pysplit.split.delay.ms milliseconds (so that tuples queue toward and inside
the subprocess). The topology setting
pysplit.fail makes it fail: "import" imports a module that does not exist
when it initializes (an uncaught exception: the traceback goes to stderr and
the process exits), a word raises a ValueError at a sentence holding it
(pystorm reports it with the error command, then exits)."""
import time

from pystorm import Bolt

class SplitBolt(Bolt):
    def initialize(self, conf, context):
        self.delay = float(conf.get("pysplit.split.delay.ms", "0")) / 1000
        self.fail = conf.get("pysplit.fail", "")
        if self.fail == "import":
            import egret_no_such_module  # noqa: F401

    def process(self, tup):
        if self.delay:
            time.sleep(self.delay)
        words = tup.values[0].split()
        if self.fail and self.fail in words:
            raise ValueError("cannot split a sentence with " + repr(self.fail))
        for word in words:
            self.emit([word])


if __name__ == "__main__":
    SplitBolt().run()
