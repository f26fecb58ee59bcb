"""atheris harness for the PYTHON reader (usage in fuzz/README.md)."""

from harness import main

if __name__ == "__main__":
    main("python")
