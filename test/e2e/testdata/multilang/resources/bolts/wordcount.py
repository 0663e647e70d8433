"""A streamparse bolt in the shape of streamparse's word count quickstart:
it counts the words it receives and emits each word with its count."""
from collections import Counter

from streamparse import Bolt


class WordCountBolt(Bolt):
    outputs = ["word", "count"]

    def initialize(self, conf, ctx):
        self.counts = Counter()

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] += 1
        self.emit([word, self.counts[word]])
