"""NetworkX's own tests that fail with ``NETWORKX_TEST_BACKEND=mgapsp``, and why."""

#: test id (``Class::test`` or ``test``) -> reason
XFAIL: dict[str, str] = {}
