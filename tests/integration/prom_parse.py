#!/usr/bin/env python3
"""A strict parser of the Prometheus text exposition format (0.0.4), for
moatd's /metrics: every line is a comment, HELP, TYPE or a sample; names and
labels follow the grammar; each family's TYPE comes before its samples and
once; counters, and only they, are named _total; no series twice; counters
are not negative; a histogram's buckets
rise with le, end at +Inf and agree with its _count. Reads stdin, prints
'family value' lines for samples, exits 1 naming the first problem."""
import math
import re
import sys

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*'
SAMPLE = re.compile(rf'^({NAME})(\{{(.*)\}})? (\S+)( -?\d+)?$')
LABEL_PAIR = re.compile(rf'\s*({LABEL})="((?:[^"\\\n]|\\[\\"n])*)"\s*(,|$)')


def fail(n, line, why):
    sys.exit(f'line {n}: {why}: {line!r}')


def parse_value(s):
    if s in ('+Inf', '-Inf', 'NaN'):
        return float(s.replace('Inf', 'inf').replace('NaN', 'nan'))
    if not re.fullmatch(r'[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?', s):
        raise ValueError(s)
    return float(s)


def main():
    text = sys.stdin.read()
    if not text.endswith('\n'):
        sys.exit('the exposition must end with a newline')
    types, helps, seen, samples = {}, set(), set(), []
    for n, line in enumerate(text.split('\n')[:-1], 1):
        if line.startswith('# HELP '):
            parts = line.split(' ', 3)
            if len(parts) < 4 or not re.fullmatch(NAME, parts[2]) or parts[2] in helps:
                fail(n, line, 'bad or repeated HELP')
            helps.add(parts[2])
            continue
        if line.startswith('# TYPE '):
            parts = line.split(' ')
            if len(parts) != 4 or not re.fullmatch(NAME, parts[2]) or parts[2] in types:
                fail(n, line, 'bad or repeated TYPE')
            if parts[3] not in ('counter', 'gauge', 'histogram', 'summary', 'untyped'):
                fail(n, line, 'unknown type')
            # The naming rule of Prometheus' guidelines: a counter's name
            # ends in _total, nothing else's does (a gauge that sums live
            # things must not read as a counter that never goes down).
            if (parts[3] == 'counter') != parts[2].endswith('_total'):
                fail(n, line, 'a counter is named _total, and only a counter')
            if any(s[0] == parts[2] for s in samples):
                fail(n, line, 'TYPE after the family\'s samples')
            types[parts[2]] = parts[3]
            continue
        if line.startswith('#') or line == '':
            if line == '':
                fail(n, line, 'empty line')
            continue
        m = SAMPLE.match(line)
        if not m:
            fail(n, line, 'not a sample')
        name, labels_text, value = m.group(1), m.group(3), m.group(4)
        labels = {}
        if labels_text:
            pos = 0
            while pos < len(labels_text):
                lm = LABEL_PAIR.match(labels_text, pos)
                if not lm or lm.end() == pos:
                    fail(n, line, 'bad label')
                if lm.group(1) in labels:
                    fail(n, line, 'label twice')
                labels[lm.group(1)] = lm.group(2)
                pos = lm.end()
        try:
            v = parse_value(value)
        except ValueError:
            fail(n, line, 'bad value')
        family = name
        for suffix in ('_bucket', '_sum', '_count'):
            if name.endswith(suffix) and types.get(name[:-len(suffix)]) == 'histogram':
                family = name[:-len(suffix)]
        if family not in types:
            fail(n, line, 'sample without a TYPE')
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            fail(n, line, 'series twice')
        seen.add(key)
        if types[family] == 'counter' and (v < 0 or math.isnan(v)):
            fail(n, line, 'negative counter')
        samples.append((family, name, labels, v))
    for fam, t in types.items():
        if t != 'histogram':
            continue
        buckets = [(parse_value(l['le']), v) for f, nm, l, v in samples if nm == fam + '_bucket']
        count = [v for f, nm, l, v in samples if nm == fam + '_count']
        if not buckets or buckets[-1][0] != math.inf or len(count) != 1 or buckets[-1][1] != count[0]:
            sys.exit(f'{fam}: histogram without +Inf or with a count that disagrees')
        if any(b[0] >= c[0] or b[1] > c[1] for b, c in zip(buckets, buckets[1:])):
            sys.exit(f'{fam}: buckets do not rise')
    for f, nm, l, v in samples:
        lab = ','.join(f'{k}={l[k]}' for k in sorted(l))
        print(f'{nm}{{{lab}}} {v:g}')


main()
