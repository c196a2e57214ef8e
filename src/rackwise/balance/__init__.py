"""Reassignment planning (pure): minimal-move rebalancing over brokers and log directories."""
