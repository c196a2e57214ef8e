"""Consumer groups' state, pure: committed offsets and the records of ``__consumer_offsets``
that hold them (:mod:`rackwise.groups.offsets`), and classic groups' members, states and
stored metadata (:mod:`rackwise.groups.classic`)."""
