"""Static analysis of shell scripts and of the code they run: which paths they touch, which hosts they contact.

Obfuscation should not help: heredocs, ``python -c``/``node -e``/``ruby -e``/``perl -e`` and the other
runtimes, ``bash -c``/``eval``, scripts written earlier and run later (also executed directly), shell
variables, ``cd``, string concatenation in any of those languages, ``os.path.join``, ``chr`` joins, reversed
strings, base64 and hex payloads are all resolved where that can be done without running anything.

A URL counts as contacted when code does something with it (a network command's operand, an argument of a
call that is not a print, a literal in code that uses a network API); a URL that is only printed or written
in a comment is a mention. The shell tokenizer is one regular expression (``shlex`` cost ~10x more), because
agents run tens of thousands of commands per session and each is analysed.

One module per analyser: ``shell`` (scripts and the commands in them), ``python`` (an AST folder), ``langs``
(JavaScript, Ruby, Perl, PHP, R, Julia, Lua), ``codemode`` (Codex code-mode cells), over ``common`` (facts,
word lists, paths, payload decoding). Analyses of the same script text are cached by content (``cache``).
"""

from reviewbench.logs.static.common import (URL_RE, FILE_EXTENSIONS, MAX_DEPTH, MAX_SCRIPT, PYTHONS, RUNTIMES,
                                            SHELLS, Access, Facts, Workspace, decode_payloads, has_payload,
                                            language_of, resolve, shell_join)
from reviewbench.logs.static.langs import analyse_code
from reviewbench.logs.static.python import _python_inert, analyse_python
from reviewbench.logs.static.shell import analyse_script, analyse_shell

__all__ = ["URL_RE", "FILE_EXTENSIONS", "MAX_DEPTH", "MAX_SCRIPT", "PYTHONS", "RUNTIMES", "SHELLS", "Access", "Facts",
           "Workspace", "decode_payloads", "has_payload", "language_of", "resolve", "shell_join", "analyse_code",
           "_python_inert", "analyse_python", "analyse_script", "analyse_shell"]
