"""`harness check`: the guarantee stories, the mutants that prove they can fail, reports."""
