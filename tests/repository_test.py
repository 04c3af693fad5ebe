#!/usr/bin/python3
"""The repository stands on its own and says what it holds.

- No tracked file names a path outside the repository: no `..` path that
  leaves the root, no document of a sibling folder, no link to a file that
  is not there.
- data/README.md describes every data set exactly (rows, inputs, targets,
  SHA-256), and every CSV follows the convention it documents.
- The folder map of docs/architecture.md matches the tree, and every
  #include follows its table of allowed dependencies between folders.
- The CI presets build every program the tests they run need (a test whose
  program is not built is "Not Run", and fails CI).
- The write path docs/architecture.md draws is at most 8 files, each there,
  and no file on it (or beside it) includes the header of one before it.

usage: repository_test.py SOURCE_DIR
"""

import csv
import hashlib
import json
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else ".")

# Spelled in two parts so that this file does not name the folder itself.
SIBLING_FOLDER = ".." + "/shared"
# Documents that lived beside the repository before it stood alone.
OUTSIDE_DOCUMENTS = ("DESIGN.md", "TOOLCHAIN.md", "STYLE.md")
DATA_BUDGET_BYTES = 15 << 20


def tracked_files():
    """Paths relative to ROOT of every file git tracks or would add."""
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "ls-files", "--cached", "--others",
             "--exclude-standard", "-z"],
            check=True, capture_output=True).stdout.decode()
        return sorted(p for p in set(out.split("\0"))
                      if p and os.path.isfile(os.path.join(ROOT, p)))
    except (OSError, subprocess.CalledProcessError):
        files = []
        for folder, dirs, names in os.walk(ROOT):
            dirs[:] = [d for d in dirs
                       if d not in (".git", "build", "streamreg-data")]
            files += [os.path.relpath(os.path.join(folder, n), ROOT)
                      for n in names]
        return sorted(files)


def text_of(path):
    """The file's text, or None for a binary file."""
    with open(os.path.join(ROOT, path), "rb") as f:
        data = f.read()
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")


# A relative path that begins with `..` segments.
PARENT_PATH = r"\.\.(?:/\.\.)*(?:/[\w.+-]+)*"
# `..` paths relative to the source root, to the file's own folder, and
# bare ones (relative to the file's folder; at least one `/` so that an
# ellipsis or a range like 1..8 is not taken for a path).
ROOT_RELATIVE = re.compile(
    r"\$\{(?:PROJECT_SOURCE_DIR|CMAKE_SOURCE_DIR)\}/(" + PARENT_PATH + ")")
FILE_RELATIVE = re.compile(
    r"(?:\$\{CMAKE_CURRENT_SOURCE_DIR\}/|\$\(dirname \"?\$(?:0|\{BASH_SOURCE\[0\]\})\"?\)/)(" +
    PARENT_PATH + ")")
BARE = re.compile(r"(?<![\w./$}\-:])(\.\.(?:/\.\.)*(?:/[\w.+-]+)+)")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def leaves_root(base, path):
    resolved = os.path.normpath(os.path.join(base, path))
    return resolved == ".." or resolved.startswith("../")


def outside_references(path, text):
    """(line number, what) for every reference of `text` outside ROOT."""
    found = []
    folder = os.path.dirname(path)
    names_in_repo = {os.path.basename(p) for p in tracked_files()}
    for number, line in enumerate(text.splitlines(), 1):
        if SIBLING_FOLDER in line:
            found.append((number, SIBLING_FOLDER))
        for match in ROOT_RELATIVE.finditer(line):
            if leaves_root("", match.group(1)):
                found.append((number, match.group(0)))
        for pattern in (FILE_RELATIVE, BARE):
            for match in pattern.finditer(line):
                if leaves_root(folder, match.group(1)):
                    found.append((number, match.group(0)))
        for document in OUTSIDE_DOCUMENTS:
            if re.search(r"\b" + re.escape(document), line) and (
                    document not in names_in_repo):
                found.append((number, document))
        if path.endswith(".md"):
            for match in MARKDOWN_LINK.finditer(line):
                target = match.group(1).split("#")[0]
                if not target or re.match(r"^[a-z]+:", target):
                    continue
                if leaves_root(folder, target) or not os.path.exists(
                        os.path.join(ROOT, folder, target)):
                    found.append((number, "link " + match.group(1)))
    return found


class SelfContainedTest(unittest.TestCase):

    def test_no_file_refers_outside_the_repository(self):
        problems = []
        for path in tracked_files():
            if path.startswith("data/") and not path.endswith(".md"):
                continue  # the data sets themselves
            if path == "tests/repository_test.py":
                continue  # its own examples of what it rejects
            text = text_of(path)
            if text is None:
                continue
            problems += ["%s:%d: %s" % (path, n, what)
                         for n, what in outside_references(path, text)]
        if problems:
            self.fail("outside the repository:\n" + "\n".join(problems))

    def test_the_checker_sees_what_it_must(self):
        # The rules above, on lines that break them and lines that do not.
        self.assertTrue(outside_references(
            "README.md", "see " + SIBLING_FOLDER + "/x"))
        self.assertTrue(outside_references("tests/a.txt",
                                           "x ${PROJECT_SOURCE_DIR}/../y"))
        self.assertTrue(outside_references("deploy/a.sh",
                                           'cd "$(dirname "$0")/../.."'))
        self.assertTrue(outside_references("deploy/a.md", "[a](../../b)"))
        self.assertTrue(outside_references("a.md", "[a](missing.md)"))
        self.assertTrue(outside_references("core/a.h",
                                           "// (" + "DESIGN" + ".md §3)"))
        self.assertTrue(outside_references("bench/a.sh", "x ../../data/y"))
        self.assertFalse(outside_references("deploy/a.sh",
                                            'cd "$(dirname "$0")/.."'))
        self.assertFalse(outside_references("deploy/a.md",
                                            "[d](../Dockerfile)"))
        self.assertFalse(outside_references("a.md", "q1..q7, 1..8, wal-...log"))
        self.assertFalse(outside_references("a.md", "[x](https://a.b/c)"))


def data_table():
    """Rows of data/README.md's table of files, as dicts."""
    with open(os.path.join(ROOT, "data", "README.md")) as f:
        text = f.read()
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[1].startswith("`") and cells[1].endswith(
                ".csv`"):
            rows.append({
                "name": cells[0],
                "file": cells[1].strip("`"),
                "rows": int(cells[2]),
                "inputs": int(cells[3]),
                "targets": [t.strip() for t in cells[4].split(",")],
                "sha256": cells[5].strip("`"),
            })
    return rows


# A path of the repository written in a document: `core/model/model.h`.
DOCUMENTED_PATH = re.compile(
    r"`((?:\.ci|bench|client|common|core|data|deploy|docs|proto|server|tests)"
    r"/[\w./-]*)`")


class DocumentedPathsTest(unittest.TestCase):

    def test_every_path_a_document_names_exists(self):
        problems = []
        for path in tracked_files():
            if not path.endswith(".md") or path.startswith("data/"):
                continue
            for number, line in enumerate(text_of(path).splitlines(), 1):
                for match in DOCUMENTED_PATH.finditer(line):
                    named = match.group(1).rstrip("/")
                    if not os.path.exists(os.path.join(ROOT, named)):
                        problems.append("%s:%d: %s" % (path, number, named))
        if problems:
            self.fail("paths that do not exist:\n" + "\n".join(problems))


class DataTest(unittest.TestCase):

    def test_every_data_set_is_described_exactly(self):
        table = data_table()
        self.assertGreaterEqual(len(table), 16)
        listed = {"data/" + row["file"] for row in table}
        present = {p for p in tracked_files()
                   if p.startswith("data/") and p.endswith(".csv")}
        self.assertEqual(present, listed)
        for row in table:
            with self.subTest(data_set=row["name"]):
                path = os.path.join(ROOT, "data", row["file"])
                with open(path, "rb") as f:
                    self.assertEqual(row["sha256"],
                                     hashlib.sha256(f.read()).hexdigest())
                folder = os.path.dirname(path)
                self.assertTrue(os.path.isfile(os.path.join(folder,
                                                            "SOURCE.md")))
                self.check_convention(path, row)

    def check_convention(self, path, row):
        with open(path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader)
            count = 0
            for values in reader:
                count += 1
                self.assertEqual(len(header), len(values),
                                 "%s row %d" % (path, count))
                for value in values:
                    float(value)  # every value numeric
        self.assertEqual(row["rows"], count)
        targets = [c for c in header if c.startswith("target_")]
        inputs = [c for c in header
                  if not c.startswith(("target_", "id_"))]
        self.assertEqual(row["inputs"], len(inputs))
        self.assertEqual(["target_" + t for t in row["targets"]], targets)
        self.assertEqual(targets, header[len(header) - len(targets):],
                         "targets come last")
        self.assertEqual(len(set(header)), len(header), "distinct names")

    def test_within_budget(self):
        total = sum(os.path.getsize(os.path.join(ROOT, p))
                    for p in tracked_files() if p.startswith("data/"))
        self.assertLessEqual(total, DATA_BUDGET_BYTES)


def folder_map():
    """The folders docs/architecture.md lists under "## Folder map"."""
    with open(os.path.join(ROOT, "docs", "architecture.md")) as f:
        text = f.read()
    section = text.split("## Folder map", 1)[1]
    block = section.split("```", 2)[1]
    folders = []
    for line in block.splitlines():
        first = line.split(" ", 1)[0]
        if first.endswith("/"):
            folders.append(first.rstrip("/"))
    return folders


def matches(entry, folder):
    pattern = "^" + re.escape(entry).replace(re.escape("<name>"),
                                              "[^/]+") + "$"
    return re.match(pattern, folder) is not None


class FolderMapTest(unittest.TestCase):

    def test_folder_map_matches_the_tree(self):
        entries = folder_map()
        self.assertTrue(entries)
        tree = set()
        for path in tracked_files():
            folder = os.path.dirname(path)
            while folder:
                tree.add(folder)
                folder = os.path.dirname(folder)
        unlisted = sorted(f for f in tree
                          if not any(matches(e, f) for e in entries))
        self.assertEqual([], unlisted, "folders missing from the map")
        missing = [e for e in entries
                   if not any(matches(e, f) for f in tree)]
        self.assertEqual([], missing, "folders in the map but not the tree")


OUR_FOLDERS = ("common", "core", "server", "client", "bench", "tests")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)


def dependency_table():
    """{folder: (allowed folders, may use gRPC)} from docs/architecture.md."""
    with open(os.path.join(ROOT, "docs", "architecture.md")) as f:
        text = f.read()
    section = text.split("## Allowed dependencies", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        folder = cells[0].strip("`")
        allowed = [a.strip().strip("`") for a in cells[1].split(",")
                   if a.strip()]
        table[folder] = (allowed, cells[2] == "yes")
    return table


def folder_matches(pattern, folder):
    if pattern == "anything":
        return True
    if pattern.endswith("/*"):
        return folder.startswith(pattern[:-1])
    return folder == pattern


def rule_for(table, folder):
    """The table's row for a source folder: exact, else the wildcard row."""
    if folder in table:
        return table[folder]
    for pattern, rule in table.items():
        if pattern.endswith("/*") and folder_matches(pattern, folder):
            return rule
    return None


def uses_grpc(kind, path):
    return (kind == "<" and path.startswith(("grpcpp/", "grpc/", "grpc++/"))
            or path.startswith(("streamreg/v1/", "grpc/health/"))
            or ".grpc.pb.h" in path or path.endswith(".pb.h"))


def layering_violations(table, source, text):
    folder = os.path.dirname(source)
    rule = rule_for(table, folder)
    if rule is None:
        return ["%s: its folder has no row in the table" % source]
    allowed, grpc = rule
    found = []
    for match in INCLUDE.finditer(text):
        kind, path = match.group(1), match.group(2)
        if uses_grpc(kind, path):
            if not grpc:
                found.append("%s: includes %s (gRPC)" % (source, path))
            continue
        target = os.path.dirname(path)
        if kind != '"' or target.split("/")[0] not in OUR_FOLDERS:
            continue
        if target == folder or any(folder_matches(a, target)
                                   for a in allowed):
            continue
        found.append("%s: includes %s" % (source, path))
    return found


class LayeringTest(unittest.TestCase):

    def test_every_include_follows_the_table(self):
        table = dependency_table()
        self.assertIn("core/model", table)
        problems = []
        for path in tracked_files():
            if path.endswith((".h", ".cc")) and path.split("/")[0] in (
                    OUR_FOLDERS):
                problems += layering_violations(table, path, text_of(path))
        if problems:
            self.fail("\n".join(problems))

    def test_the_check_sees_a_violation(self):
        table = dependency_table()
        self.assertTrue(layering_violations(
            table, "core/index/a.cc", '#include "core/model/model.h"'))
        self.assertTrue(layering_violations(
            table, "server/hosting/a.cc", "#include <grpcpp/grpcpp.h>"))
        self.assertTrue(layering_violations(
            table, "server/storage/a.h", '#include "streamreg/v1/model.pb.h"'))
        self.assertTrue(layering_violations(
            table, "core/base/a.h", '#include "common/csv_table.h"'))
        self.assertFalse(layering_violations(
            table, "core/model/a.cc", '#include "core/index/cover_tree.h"'))
        self.assertFalse(layering_violations(
            table, "server/rpc/a.cc", "#include <grpcpp/grpcpp.h>"))
        self.assertTrue(layering_violations(table, "newfolder/a.cc", ""))


def preset_targets(name):
    """The targets the build preset `name` of CMakePresets.json builds."""
    with open(os.path.join(ROOT, "CMakePresets.json")) as f:
        presets = json.load(f)["buildPresets"]
    return set(next(p for p in presets if p["name"] == name)["targets"])


def concurrency_test_programs(cmake_text):
    """Test programs labelled `concurrency` (the ThreadSanitizer run)."""
    programs = set()
    for match in re.finditer(
            r"streamreg_test\(\S*?([\w]+) LABELS concurrency\)", cmake_text):
        programs.add(match.group(1))
    for match in re.finditer(
            r"gtest_discover_tests\((\w+)[^)]*LABELS \"concurrency\"",
            cmake_text):
        programs.add(match.group(1))
    return programs


def ci_test_programs(cmake_text):
    """Programs the tests of the ci test preset run by name: the first word
    of the command, or a $<TARGET_FILE:...> in it."""
    with open(os.path.join(ROOT, "CMakePresets.json")) as f:
        presets = json.load(f)["testPresets"]
    include = next(p for p in presets if p["name"] == "ci")[
        "filter"]["include"]["name"]
    programs = {}
    for match in re.finditer(
            r"add_test\(NAME (\S+)\s+COMMAND (.*?)\)\n", cmake_text, re.S):
        name, command = match.groups()
        if not re.search(include, name):
            continue
        needed = set(re.findall(r"\$<TARGET_FILE:([\w-]+)>", command))
        first = command.split()[0]
        if re.fullmatch(r"streamreg[\w-]*", first):
            needed.add(first)
        programs[name] = needed
    return programs


class CiBuildsWhatItRunsTest(unittest.TestCase):

    def setUp(self):
        with open(os.path.join(ROOT, "tests", "CMakeLists.txt")) as f:
            self.cmake_text = f.read()

    def test_tsan_builds_every_concurrency_test(self):
        programs = concurrency_test_programs(self.cmake_text)
        self.assertIn("hosting_test", programs)
        self.assertIn("mlkr_objective_test", programs)
        missing = programs - preset_targets("tsan")
        self.assertFalse(missing, "not in the tsan build preset's targets")

    def test_ci_builds_every_program_its_tests_run(self):
        programs = ci_test_programs(self.cmake_text)
        self.assertIn("streamreg-bench-index", programs["bench_index_smoke"])
        built = preset_targets("ci")
        missing = {test: needed - built for test, needed in programs.items()
                   if needed - built}
        self.assertFalse(missing, "not in the ci build preset's targets")


MAX_WRITE_PATH_FILES = 8
# In cluster mode the log's step is three: the batch appended to the
# model's stream, the follower that reads it back in order, and what an
# entry does to the replica.
MAX_CLUSTER_WRITE_PATH_FILES = MAX_WRITE_PATH_FILES + 2


def write_path(text, which="write path"):
    """The steps of the path between the markers `which` names: per step,
    its file and the files beside it, in order."""
    begin = text.index("<!-- %s: begin -->" % which)
    end = text.index("<!-- %s: end -->" % which)
    steps = []
    for item in re.split(r"\n(?=\d+\. )", text[begin:end])[1:]:
        files = re.findall(r"`([a-z_/]+\.(?:cc|h))`", item)
        steps.append((files[0], files[1:]))
    return steps


def header_of(path):
    return re.sub(r"\.cc$", ".h", path)


def reaches_back(steps, source_text):
    """Where a step's file, or one beside it, includes the header of a step
    before it; source_text(path) gives a file's text (and its header's)."""
    found = []
    for i, (step, beside) in enumerate(steps):
        earlier = {header_of(s) for s, _ in steps[:i]}
        for path in [step] + beside:
            for source in sorted({path, header_of(path)}):
                for included in re.findall(r'#include "([^"]+)"',
                                           source_text(source)):
                    if included in earlier:
                        found.append("%s (step %d) includes %s" %
                                     (source, i + 1, included))
    return found


class WritePathTest(unittest.TestCase):

    def setUp(self):
        architecture = text_of("docs/architecture.md")
        self.paths = {
            "write path": (write_path(architecture), MAX_WRITE_PATH_FILES),
            "cluster write path": (
                write_path(architecture, "cluster write path"),
                MAX_CLUSTER_WRITE_PATH_FILES),
        }

    def test_the_paths_are_short_and_their_files_are_there(self):
        for which, (steps, most) in self.paths.items():
            self.assertGreaterEqual(len(steps), 5, which)
            self.assertLessEqual(len(steps), most, which)
            for step, beside in steps:
                for path in [step] + beside:
                    self.assertTrue(
                        os.path.isfile(os.path.join(ROOT, path)), path)

    def test_no_file_reaches_back_to_one_before_it(self):
        def source_text(path):
            full = os.path.join(ROOT, path)
            return text_of(path) if os.path.isfile(full) else ""
        for which, (steps, _) in self.paths.items():
            problems = reaches_back(steps, source_text)
            if problems:
                self.fail(which + ":\n" + "\n".join(problems))

    def test_a_cluster_shares_the_single_servers_ends(self):
        single, _ = self.paths["write path"]
        cluster, _ = self.paths["cluster write path"]
        self.assertEqual([s for s, _ in cluster[:2]],
                         [s for s, _ in single[:2]])
        self.assertEqual([s for s, _ in cluster[-5:]],
                         [s for s, _ in single[-5:]])

    def test_the_check_sees_a_file_reaching_back(self):
        steps = [("a/first.cc", []), ("a/second.cc", ["a/beside.cc"])]
        texts = {"a/beside.h": '#include "a/first.h"'}
        self.assertEqual(reaches_back(steps, lambda p: texts.get(p, "")),
                         ["a/beside.h (step 2) includes a/first.h"])
        self.assertFalse(reaches_back(steps[::-1][:1],
                                      lambda p: texts.get(p, "")))


def units_tested_elsewhere(text):
    """The rows of docs/building.md's table of units tested under another
    name: {unit: test}."""
    begin = text.index("<!-- units tested elsewhere: begin -->")
    end = text.index("<!-- units tested elsewhere: end -->")
    return dict(re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|",
                           text[begin:end], re.MULTILINE))


class UnitTestsTest(unittest.TestCase):

    def test_every_unit_has_a_test_of_its_name_or_a_row(self):
        named = set()
        for folder, _, files in os.walk(os.path.join(ROOT, "tests")):
            named.update(f[:-len("_test.cc")] for f in files
                         if f.endswith("_test.cc"))
        elsewhere = units_tested_elsewhere(text_of("docs/building.md"))
        missing, needless = [], []
        for top in ("core", "server"):
            for folder, _, files in os.walk(os.path.join(ROOT, top)):
                for f in sorted(files):
                    if not f.endswith(".cc"):
                        continue
                    unit = os.path.relpath(os.path.join(folder, f), ROOT)
                    has_own = f[:-len(".cc")] in named
                    if not has_own and unit not in elsewhere:
                        missing.append(unit)
                    if has_own and unit in elsewhere:
                        needless.append(unit)
        self.assertFalse(missing, "no test of its name nor a row in "
                         "docs/building.md's table")
        self.assertFalse(needless, "a test of its name and a row too")

    def test_every_row_names_a_unit_and_a_test_that_exist(self):
        elsewhere = units_tested_elsewhere(text_of("docs/building.md"))
        self.assertGreater(len(elsewhere), 0)
        for unit, test in elsewhere.items():
            self.assertTrue(os.path.isfile(os.path.join(ROOT, unit)), unit)
            self.assertTrue(os.path.isfile(os.path.join(ROOT, test)), test)


MAX_FUNCTION_LINES = 100


def long_functions(text, most=MAX_FUNCTION_LINES):
    """(first line, lines) of each brace block opened on a line holding a
    ')' (a function's or a lambda's body: its signature ends there) that
    runs over `most` lines; comments and string literals ignored."""
    found, opened = [], []
    for number, line in enumerate(text.split("\n"), 1):
        code = re.sub(r'"(\\.|[^"\\])*"', '""', re.sub(r"//.*", "", line))
        for char in code:
            if char == "{":
                opened.append((number, ")" in code))
            elif char == "}" and opened:
                start, is_body = opened.pop()
                if is_body and number - start > most:
                    found.append((start, number - start))
    return found


class FunctionLengthTest(unittest.TestCase):

    def test_no_function_is_over_a_hundred_lines(self):
        problems = []
        for top in ("client", "core", "server"):
            for folder, _, files in os.walk(os.path.join(ROOT, top)):
                for f in sorted(files):
                    if not f.endswith((".cc", ".h")):
                        continue
                    path = os.path.relpath(os.path.join(folder, f), ROOT)
                    for start, lines in long_functions(text_of(path)):
                        problems.append("%s:%d: %d lines" %
                                        (path, start, lines))
        self.assertFalse(problems, "functions over %d lines" %
                         MAX_FUNCTION_LINES)

    def test_the_check_sees_a_long_function(self):
        body = "\n".join(["  x += 1;  // {"] * 101)
        text = ("int F(int x) {\n" + body + "\n  return x;\n}\n"
                "struct S {\n" + body + "\n};\n")
        self.assertEqual(long_functions(text), [(1, 103)])
        self.assertEqual(long_functions('void G() { s = "}"; }'), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
