"""The file formats every layer shares, each read or written in one place: YAML read
(`yaml_text`), JUnit XML written (`junit`)."""
