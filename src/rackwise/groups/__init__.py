"""Consumer groups' state, pure: the committed offsets of simple groups and the records of
``__consumer_offsets`` that hold them (:mod:`rackwise.groups.offsets`)."""
