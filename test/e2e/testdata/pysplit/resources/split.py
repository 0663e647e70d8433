"""The split bolt of the pysplit test topology, with pystorm: one (word,)
tuple per word of the sentence, after SPLIT_DELAY_MS milliseconds (so that
tuples queue toward and inside the subprocess)."""
import os
import time

from pystorm import Bolt

DELAY = float(os.environ.get("SPLIT_DELAY_MS", "0")) / 1000


class SplitBolt(Bolt):
    def process(self, tup):
        if DELAY:
            time.sleep(DELAY)
        for word in tup.values[0].split():
            self.emit([word])


if __name__ == "__main__":
    SplitBolt().run()
