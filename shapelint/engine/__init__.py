"""The one pipeline from paths to findings: discover, read, extract, rules, suppress, fix."""
