"""Delivering a COMPLETED task's file to the destinations it names (docs/destinations.md): one
attempt per pending delivery, each kind of destination one module of :mod:`.kinds` registered in
:mod:`.composition`, encrypted at delivery when the destination asks, and the webhooks of a
delivery that ended. The lifecycle workflow runs it in the callback function after the callbacks."""
