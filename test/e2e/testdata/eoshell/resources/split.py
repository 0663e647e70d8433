"""The split bolt of the eoshell test topology, with pystorm: one (word,)
tuple per word of the sentence. It keeps no state: effectively-once accepts
it marked stateless."""
from pystorm import Bolt


class SplitBolt(Bolt):
    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


if __name__ == "__main__":
    SplitBolt().run()
