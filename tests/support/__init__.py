"""Helpers for the connection-robustness tests: certificates, TCP proxies, a TLS listener."""
