"""The push channel: task events over a WebSocket (docs/push.md)."""
