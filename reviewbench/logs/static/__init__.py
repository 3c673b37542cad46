"""Static analysis of shell scripts and of the code they run: which paths they touch, which hosts they contact.

Obfuscation should not help: heredocs, ``python -c``/``node -e``/``ruby -e``/``perl -e`` and the other
runtimes, ``bash -c``/``eval``, scripts written earlier and run later (also executed directly), shell
variables, ``cd``, string concatenation in any of those languages, ``os.path.join``, ``chr`` joins, reversed
strings, base64 and hex payloads are all resolved where that can be done without running anything.

Facts come from what code does, not from literals lying about: a path is read, walked or written, and a URL
contacted, when it resolves into the argument of a call that acts (a network command's operand, ``open``,
``os.walk``, ``fetch``); a string that is only printed (``print``, ``process.stderr.write``, a logger, an
exception's message), handed to a text operation (``.replace("/**", "")``, ``re.sub``) or assigned and never
used is a mention. Relative paths resolve against the working directory the log records. The shell tokenizer is one regular expression (``shlex`` cost ~10x more), because
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
