#!/usr/bin/env python3
"""Checks that every relative link in README.md and docs/*.md resolves.

    scripts/doclinks.py [FILE.md ...]

A link [text](path#anchor) must name a file or directory of the repository
(relative to the page), and its anchor, when there is one, a heading of
that page (GitHub's rule: lower case, punctuation dropped, spaces to '-',
a repeated heading gets -1, -2, ...) or an explicit <a id="..."> or
<a name="...">. Links to other sites (http:, https:, mailto:) are not
followed. Code blocks and code spans are skipped. Exits 1 and lists every
broken link, or prints how many links it checked.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r'!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
ANCHOR = re.compile(r'<a\s+(?:id|name)="([^"]+)"')


def strip_code(text):
    """The text without fenced code blocks and code spans (same lines)."""
    out, fence = [], None
    for line in text.split('\n'):
        m = re.match(r'^\s*(```+|~~~+)', line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append('')
            continue
        if m:
            fence = m.group(1)
            out.append('')
            continue
        out.append(re.sub(r'(`+)(?:(?!\1).)+?\1', '', line))
    return '\n'.join(out)


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r'<[^>]+>', '', s)
    s = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', s)
    s = re.sub(r'[^\w\- ]', '', s, flags=re.UNICODE)
    return s.replace(' ', '-')


def anchors(path, cache={}):
    if path not in cache:
        text = open(path, encoding='utf-8').read()
        found, seen = set(ANCHOR.findall(text)), {}
        for line in strip_code(text.replace('`', '\x00')).split('\n'):
            m = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
            if not m:
                continue
            base = slug(m.group(1).replace('\x00', ''))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else '%s-%d' % (base, n))
        cache[path] = found
    return cache[path]


def check(page):
    bad, n = [], 0
    text = strip_code(open(page, encoding='utf-8').read())
    for lineno, line in enumerate(text.split('\n'), 1):
        for target in LINK.findall(line):
            if re.match(r'^[a-z][a-z0-9+.-]*:', target):
                continue
            n += 1
            path, _, frag = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            where = '%s:%d: %s' % (os.path.relpath(page, ROOT), lineno, target)
            if not os.path.exists(dest):
                bad.append(where + ' (no such file)')
            elif frag and (not dest.endswith('.md') or frag not in anchors(dest)):
                bad.append(where + ' (no such anchor)')
    return bad, n


def main():
    pages = sys.argv[1:] or [os.path.join(ROOT, 'README.md')] + sorted(
        glob.glob(os.path.join(ROOT, 'docs', '*.md')))
    bad, total = [], 0
    for page in pages:
        b, n = check(os.path.abspath(page))
        bad += b
        total += n
    for b in bad:
        print(b)
    if bad:
        print('%d of %d relative links are broken' % (len(bad), total))
        return 1
    print('%d relative links in %d pages resolve' % (total, len(pages)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
