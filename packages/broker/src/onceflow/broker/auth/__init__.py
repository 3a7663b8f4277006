"""SASL authentication (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and the users file behind it."""

from onceflow.broker.auth.credentials import MECHANISMS, CredentialStore, ScramCredential
from onceflow.broker.auth.errors import AuthenticationFailed
from onceflow.broker.auth.session import ANONYMOUS, SaslSession

__all__ = ["ANONYMOUS", "MECHANISMS", "AuthenticationFailed", "CredentialStore", "SaslSession", "ScramCredential"]
