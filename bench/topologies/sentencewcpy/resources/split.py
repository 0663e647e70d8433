"""T3's split bolt in Python with pystorm: one (word, scheduled) tuple per
word of the sentence, anchored on it (pystorm's auto_anchor), then the
sentence is acked (auto_ack)."""
from pystorm import Bolt


class SplitBolt(Bolt):
    def process(self, tup):
        sentence, scheduled = tup.values
        for word in sentence.split():
            self.emit([word, scheduled])


if __name__ == "__main__":
    SplitBolt().run()
