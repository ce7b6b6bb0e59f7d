"""Placeholder: replaced by the generated exception hierarchy."""


class InterfaceError(Exception):
    pass


class ClientConfigurationError(InterfaceError, ValueError):
    pass


class DataError(InterfaceError, ValueError):
    pass


class InternalClientError(Exception):
    pass


class ProtocolError(InternalClientError):
    pass
