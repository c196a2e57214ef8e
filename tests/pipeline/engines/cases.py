"""Plan cases both engines are checked against: five hand-worked clusters and the files the
plan must write for them."""

from __future__ import annotations

# east: broker 1's /d2 has failed and holds t-0; the replica must leave broker 1 and, to keep
#   one replica per rack, goes to broker 2 (rack /r1), into /d1 (both empty: the first by path).
# west: t-0 on 1 and 2, both in /dc1: badly spread; 1 stays, the other goes to dc2, broker 3.
#   One of west's input rows was rejected by ingestion: it is planned on the valid rows.
# north: leaders 1, 1, 2 over brokers 1, 2, 3: t-1 hands its leadership to follower 3.
# south: RF 2 but broker 2's only directory has failed: one broker left, cannot be planned.
# quiet: already balanced and spread: nothing to do, no reassignment file.
BROKERS = [
    ("east", 1, "/r1"),
    ("east", 2, "/r1"),
    ("east", 3, "/r2"),
    ("west", 1, "/dc1/r1"),
    ("west", 2, "/dc1/r1"),
    ("west", 3, "/dc2/r1"),
    ("west", 4, "/dc2/r1"),
    ("north", 1, "/r"),
    ("north", 2, "/r"),
    ("north", 3, "/r"),
    ("south", 1, "/r1"),
    ("south", 2, "/r2"),
    ("quiet", 1, "/a"),
    ("quiet", 2, "/b"),
]
LOG_DIRS = [
    ("east", 1, "/d1", 1000, True),
    ("east", 1, "/d2", 1000, False),
    ("east", 2, "/d2", 1000, True),
    ("east", 2, "/d1", 1000, True),
    ("east", 3, "/d1", 1000, True),
    ("south", 2, "/d1", 1000, False),
]
REPLICAS = [
    ("east", "t", 0, 0, 1, "/d2", 100),
    ("east", "t", 0, 1, 3, "/d1", 100),
    ("west", "t", 0, 0, 1, None, 10),
    ("west", "t", 0, 1, 2, None, 10),
    ("north", "t", 0, 0, 1, None, 5),
    ("north", "t", 0, 1, 2, None, 5),
    ("north", "t", 1, 0, 1, None, 5),
    ("north", "t", 1, 1, 3, None, 5),
    ("north", "t", 2, 0, 2, None, 5),
    ("north", "t", 2, 1, 3, None, 5),
    ("south", "s", 0, 0, 1, None, 1),
    ("south", "s", 0, 1, 2, None, 1),
    ("quiet", "q", 0, 0, 1, None, 1),
    ("quiet", "q", 0, 1, 2, None, 1),
    ("quiet", "q", 1, 0, 2, None, 1),
    ("quiet", "q", 1, 1, 1, None, 1),
]
REJECTED = [("west", "assignment.json", '{"topic":"t","partition":9}', "replica on broker 99")]
EXPECTED = {
    "east": '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3],'
    '"log_dirs":["/d1","any"]}]}',
    "west": '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,3],'
    '"log_dirs":["any","any"]}]}',
    "north": '{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[3,1],'
    '"log_dirs":["any","any"]}]}',
}
THROTTLE = 50  # bytes per second
