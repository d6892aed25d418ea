"""A Python policy for `wattsched simulate --policy examples/strict_fcfs.py:StrictFcfs` (docs/single-runs.md).

Strict first come, first served: start queued jobs in queue order until the first one that does not fit. It
schedules exactly as the built-in `fcfs` (tests/test_policy_import.py checks it). A policy has a `name` and a
`schedule(view)` method returning the *positions* of the jobs to start now (wattsched.core.policy).
"""

from wattsched.core.policy import PolicyBase, View


class StrictFcfs(PolicyBase):
    name = "strict-fcfs"

    def schedule(self, view: View) -> list[int]:
        free, chosen = view.free, []
        for pos in view.queue:
            if view.jobs.size[pos] > free:
                break
            chosen.append(int(pos))
            free -= int(view.jobs.size[pos])
        return chosen
