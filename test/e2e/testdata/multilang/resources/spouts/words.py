"""A streamparse spout in the shape of streamparse's word count quickstart:
it declares its outputs and emits words from an endless cycle."""
from itertools import cycle

from streamparse import Spout


class WordSpout(Spout):
    outputs = ["word"]

    def initialize(self, stormconf, context):
        self.words = cycle(["dog", "cat", "zebra", "elephant"])

    def next_tuple(self):
        self.emit([next(self.words)])
