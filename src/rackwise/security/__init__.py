"""Who a request comes from and what it may do: Kafka's principals, and (in the modules
beside this one) the pieces of authentication and authorization that hold no I/O.

Constraints
    Pure: nothing here opens a socket or a file; the listeners (:mod:`rackwise.net`) and the
    nodes hand these modules what they read and act on what they answer.
"""

from rackwise.security.principal import ANONYMOUS, KafkaPrincipal

__all__ = ["ANONYMOUS", "KafkaPrincipal"]
