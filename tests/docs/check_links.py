#!/usr/bin/env python3
"""Checks the relative links of every Markdown file in the repository (build*/ and .git excluded).

Every link [text](path#anchor) that is not a URL must name an existing file or folder, relative to
the file that holds it, and an anchor must name a heading of the target Markdown file (or, for
[text](#anchor), of the same file) by GitHub's rules: lowercase, punctuation removed, spaces to
'-', a repeated heading suffixed -1, -2, ... Links inside code blocks and code spans are not links.
Prints "doc links: N links in M files, all resolve" and exits 0, else lists the broken ones and
exits 1. Usage: check_links.py [repository root]; the default is this file's ../..
"""
import os
import re
import sys
from urllib.parse import unquote

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
CODE_SPAN = re.compile(r"(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)  # within a paragraph
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose(text, spans=False):
    """The file's text with fenced code blocks blanked (line numbers kept) and, unless `spans`,
    code spans removed."""
    out, fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
        elif m:
            fence = m.group(1)
            out.append("")
        else:
            out.append(line)
    text = "\n".join(out)
    return text if spans else CODE_SPAN.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def slug(title):
    """GitHub's anchor for a heading's text: code spans verbatim; elsewhere links become their
    text, HTML tags go and backslash escapes are resolved."""
    parts = re.split(r"(`+)(.+?)\1", title)
    text = ""
    for i in range(0, len(parts), 3):
        part = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", parts[i])
        text += re.sub(r"\\(.)", r"\1", re.sub(r"(?<!\\)<[^>]+>", "", part))
        text += parts[i + 2] if i + 2 < len(parts) else ""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for line in prose(text, spans=True).split("\n"):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
        found.update(HTML_ANCHOR.findall(text))
        cache[path] = found
    return cache[path]


def markdown_files(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not d.startswith("build"))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(top, name)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    files, links, broken = 0, 0, []
    for path in markdown_files(root):
        files += 1
        with open(path, encoding="utf-8") as f:
            text = prose(f.read())
        for m in LINK.finditer(text):
            target = m.group(2)
            if not target or SCHEME.match(target):
                continue
            links += 1
            where = f"{os.path.relpath(path, root)}:{text.count(chr(10), 0, m.start()) + 1}"
            file_part, _, anchor = unquote(target).partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                broken.append(f"{where}: {target}: no such file {os.path.relpath(dest, root)}")
            elif anchor and dest.endswith(".md") and os.path.isfile(dest) and anchor not in anchors(dest):
                broken.append(f"{where}: {target}: no heading #{anchor} in {os.path.relpath(dest, root)}")
    if broken:
        print("\n".join(broken))
        print(f"doc links: {len(broken)} of {links} links in {files} files broken")
        return 1
    print(f"doc links: {links} links in {files} files, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
