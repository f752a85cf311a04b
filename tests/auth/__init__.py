"""Tests of :mod:`streamfns.auth`: the credential store, the two logins and safe refreshing (offline:
the vendors are played by the loopback server of :mod:`tests.auth.oauth_server`)."""
