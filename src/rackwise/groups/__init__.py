"""Consumer groups' state, pure: committed offsets and the records of ``__consumer_offsets``
that hold them (:mod:`rackwise.groups.offsets`), and classic groups' members, states and
generations (:mod:`rackwise.groups.classic`) and the record that stores them
(:mod:`rackwise.groups.group_metadata`)."""
