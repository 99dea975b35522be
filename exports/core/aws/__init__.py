"""Adapters: each takes its SDK client and speaks the service's own types and errors."""
