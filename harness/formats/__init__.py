"""What every layer reads, writes or serves on, one of each: YAML read (`yaml_text`), JUnit
XML written (`junit`), server-sent events read (`sse`), and the loopback socket a server of
ours is bound to (`loopback`)."""
