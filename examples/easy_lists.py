"""EASY backfilling in Python, in the idiom that keeps a pass cheap: `--policy examples/easy_lists.py:EasyLists`.

The view's arrays are NumPy arrays; indexing one element at a time (`view.jobs.size[pos]`) makes a NumPy scalar
each time (~0.1 µs, and arithmetic on them is slower than on Python numbers). This policy takes what it reads in
one gather per array and `.tolist()`, then works on Python ints and floats: half the time of the element-by-element
EASY in tests/test_python_policy.py on KTH-SP2 (docs/performance.md, "Policies written in Python"). It schedules
exactly as the built-in `easy` (tests/test_python_policy_fast.py checks it).
"""

from wattsched.core.policy import PolicyBase, View


class EasyLists(PolicyBase):
    name = "easy-lists"

    def schedule(self, view: View) -> list[int]:
        jobs, now, free = view.jobs, view.now, view.free
        queue = view.queue.tolist()
        sizes = jobs.size[view.queue].tolist()
        chosen = []
        i = 0
        # start jobs in queue order while they fit
        while i < len(queue) and sizes[i] <= free:
            chosen.append(queue[i])
            free -= sizes[i]
            i += 1
        if i == len(queue):
            return chosen
        estimates = jobs.estimate[view.queue].tolist()
        # the head's reservation (shadow time) from the expected ends of the running jobs and of those just started
        ends = [(now + estimates[k], sizes[k]) for k in range(i)]
        running = view.running
        expected = view.running_expected_end.tolist()
        overdue = (view.running_start + jobs.walltime[running]).tolist()  # an overdue job ends by its walltime
        ends += [
            (end if end > now else late, size)
            for end, late, size in zip(expected, overdue, jobs.size[running].tolist(), strict=True)
        ]
        ends.sort()
        need, avail, shadow = sizes[i], free, float("inf")
        for end, size in ends:
            if shadow < float("inf") and end > shadow:
                break
            avail += size
            if shadow == float("inf") and avail >= need:
                shadow = end
        extra = avail - need
        # backfill: a later job starts if it fits now and ends before the shadow or uses only the extra units
        for k in range(i + 1, len(queue)):
            if free == 0:
                break
            size = sizes[k]
            if size > free:
                continue
            in_time = now + estimates[k] <= shadow
            if in_time or size <= extra:
                chosen.append(queue[k])
                free -= size
                if not in_time:
                    extra -= size
        return chosen
