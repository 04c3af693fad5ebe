#!/usr/bin/python3
"""Every program and every command of the CLI explains itself.

For each: --help exits 0 and prints its usage line, its flags (each with a
default and help) and at least one example whose flags are among those it
lists; an unknown flag or command exits 2 with a one-line error on stderr.

usage: cli_help_test.py PROGRAM...   (paths of the built programs)
"""

import os
import re
import subprocess
import sys
import unittest

PROGRAMS = sys.argv[1:]
del sys.argv[1:]


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True,
                          timeout=30, check=False)


def listed_flags(help_text):
    return set(re.findall(r"^  --([a-z_0-9]+)  \(default ", help_text,
                          re.MULTILINE))


def examples(help_text):
    section = re.split(r"^Examples?:\n", help_text, flags=re.MULTILINE)
    if len(section) < 2:
        return []
    lines = []
    continued = False
    for line in section[1].splitlines():
        if not line.startswith("  "):
            break
        if continued:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line.strip())
        continued = lines[-1].endswith("\\")
        lines[-1] = lines[-1].rstrip("\\").rstrip()
    return lines


class HelpTest(unittest.TestCase):

    def check_help(self, argv, name):
        result = run(*argv, "--help")
        self.assertEqual(0, result.returncode, result.stderr)
        text = result.stdout
        self.assertTrue(text.startswith("usage: " + name + " "), text[:200])
        flags = listed_flags(text)
        lines = examples(text)
        self.assertTrue(lines, "no example in:\n" + text)
        for example in lines:
            self.assertTrue(example.startswith(name.split()[0]), example)
            for flag in re.findall(r"--([a-z][a-z_0-9-]*)", example):
                self.assertIn(flag.replace("-", "_"), flags | {"config", "help"},
                              "example flag of " + name + ": " + example)
        for line in text.splitlines():
            self.assertLessEqual(len(line), 79, line)
        return text

    def check_rejects(self, argv, name, message):
        result = run(*argv)
        self.assertEqual(2, result.returncode, result.stdout + result.stderr)
        self.assertEqual("", result.stdout)
        lines = result.stderr.splitlines()
        self.assertEqual(1, len(lines), result.stderr)
        self.assertTrue(lines[0].startswith(name + ": " + message), lines[0])

    def test_every_program(self):
        self.assertTrue(PROGRAMS)
        for path in PROGRAMS:
            name = os.path.basename(path)
            with self.subTest(program=name):
                text = self.check_help([path], name)
                if name != "streamreg":
                    self.assertTrue(listed_flags(text), text)
                self.check_rejects([path, "--no-such-flag"], name,
                                   "unknown flag --no_such_flag")

    def test_every_command_of_the_cli(self):
        cli = [p for p in PROGRAMS if os.path.basename(p) == "streamreg"]
        self.assertEqual(1, len(cli))
        cli = cli[0]
        text = self.check_help([cli], "streamreg")
        block = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
        commands = [re.split(r"\s{2,}", line.strip())[0]
                    for line in block.splitlines()]
        self.assertIn("create", commands)
        self.assertIn("bench learn", commands)
        for command in commands:
            words = command.split()
            with self.subTest(command=command):
                help_text = self.check_help([cli] + words,
                                            "streamreg " + command)
                # The connection flags are listed with every command.
                self.assertIn("server", listed_flags(help_text))
                self.check_rejects([cli] + words + ["--no-such-flag"],
                                   "streamreg " + command,
                                   "unknown flag --no_such_flag")
        self.check_rejects([cli, "crate"], "streamreg",
                           "unknown command 'crate' (did you mean 'create'?)")
        self.check_rejects([cli, "bench", "lern"], "streamreg",
                           "unknown command 'bench lern' (did you mean "
                           "'bench learn'?)")
        self.check_rejects([cli, "fly"], "streamreg",
                           "unknown command 'fly'")
        # A value of the wrong type says what the flag takes.
        self.check_rejects([cli, "bench", "learn", "--rate", "1k"],
                           "streamreg bench learn",
                           "--rate=1k: expected a number (its default is "
                           "1000)")
        self.check_rejects([cli, "create", "--name", "a", "--inputs", "2",
                            "--targets", "1", "--metric", "egopp"],
                           "streamreg create",
                           "--metric: unknown value 'egopp' (did you mean "
                           "'egop'?) (expected one of euclidean, gw, egop, "
                           "mlkr, glml, auto)")
        # A flag of another command is not a flag of this one.
        self.check_rejects([cli, "list", "--rate", "5"], "streamreg list",
                           "unknown flag --rate")
        # No command at all: the usage, on stderr, and exit 2.
        bare = run(cli)
        self.assertEqual(2, bare.returncode)
        self.assertTrue(bare.stderr.startswith("usage: streamreg "))


if __name__ == "__main__":
    unittest.main(verbosity=2)
