"""The source spout of the ackcheck topology as a pystorm spout.

Each task owns the message ids i < N with i % tasks == its index, emits
every owned id not yet in its acked log (acked-<index>.log in the state
directory) with the id as tuple id, appends acked ids to that log and
emits failed ids again (logging them to replays-<index>.log): the files
package ackcheck reads.
"""
import collections
import os

from pystorm import Spout


class SourceSpout(Spout):
    def initialize(self, conf, context):
        n = int(conf["ackcheck.messages"])
        state = conf["ackcheck.state.dir"]
        me, task = context["componentid"], context["taskid"]
        tasks = sorted(int(t) for t, c in context["task->component"].items() if c == me)
        index = tasks.index(task)
        acked_path = os.path.join(state, "acked-%d.log" % index)
        acked = set()
        if os.path.exists(acked_path):
            with open(acked_path) as f:
                acked = {int(line) for line in f if line.endswith("\n")}
        self.todo = collections.deque(i for i in range(index, n, len(tasks)) if i not in acked)
        self.retry = collections.deque()
        self.acked_log = open(acked_path, "a")
        self.replays_log = open(os.path.join(state, "replays-%d.log" % index), "a")

    def next_tuple(self):
        if self.retry:
            id_ = self.retry.popleft()
            self.replays_log.write("%d\n" % id_)
            self.replays_log.flush()
        elif self.todo:
            id_ = self.todo.popleft()
        else:
            return
        self.emit([id_], tup_id=id_)

    def ack(self, tup_id):
        self.acked_log.write("%d\n" % tup_id)
        self.acked_log.flush()

    def fail(self, tup_id):
        self.retry.append(tup_id)


if __name__ == "__main__":
    SourceSpout().run()
