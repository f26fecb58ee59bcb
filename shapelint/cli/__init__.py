"""The command line: `shapelint.cli.main` parses and dispatches; each command is one module
(``check``, ``rules``, ``rule``, ``engines``, ``gpus``, ``explain``, ``suggest``, ``server``,
``gemm``) with ``add_parser(sub)`` and ``run(args, out, err)``."""
