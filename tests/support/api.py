"""What API tests send: two owners' bearer headers and a minimal job body."""

ALICE = {"Authorization": "Bearer alice-token"}
BOB = {"Authorization": "Bearer bob-token"}
BODY = {"operation": "summarise", "input": {"prompt": "hello"}}
