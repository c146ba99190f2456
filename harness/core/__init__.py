"""Pure decisions of the engine: no database, network, web or CLI imports.

States and vocabularies, value objects, the fingerprint, the invariant checker, the
clock, fault points, limits, the failover policy and the gate protocol.
"""
