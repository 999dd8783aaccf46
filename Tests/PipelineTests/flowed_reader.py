# The reader the FlowedReadingsTests check mailsec against: Python email (policy=default),
# RFC 3676 unflowing with quote depth, and consecutive inline text parts joined (HTML ones
# by their text: tags out, references decoded).
# Prints one JSON string per file named on the command line: what the reader shows.
# --chooses, --last-fields, --plain-alternative: a reader that chooses among alternatives
# and fields given twice (view_as), as FlowedReadingsTests.inlinePartsEveryReader asks.
import sys, json, re, email, html
from email import policy

def unflow(text, delsp):
    """RFC 3676 §4.2 and §4.5 (the red team's unflow.py of redteam5)."""
    out = []; cur = None; curq = None
    for line in text.split('\n'):
        line = line.rstrip('\r')
        q = len(re.match(r'^(>*)', line).group(1)); l = line[q:]
        if l.startswith(' '): l = l[1:]
        soft = l != '-- ' and l.endswith(' ')
        if soft and delsp: l = l[:-1]
        if cur is not None and q == curq: cur += l
        else:
            if cur is not None: out.append(('>' * curq + ' ' if curq else '') + cur)
            cur = l; curq = q
        if not soft: out.append(('>' * curq + ' ' if curq else '') + cur); cur = None
    if cur is not None: out.append(cur)
    return '\n'.join(out)

def shown(part):
    text = part.get_content()
    if part.get_content_subtype() == 'html':
        # A mail client's view of the HTML part's text, roughly: tags out, references decoded.
        return html.unescape(re.sub(r'<[^>]*>', '', text))
    if str(part.get_param('format', '')).lower() == 'flowed':
        text = unflow(text, str(part.get_param('delsp', '')).lower() == 'yes')
    return text

def view(message):
    """What a reader shows: text/plain parts unflowed; consecutive inline text/plain
    parts of a multipart/mixed as one text (Apple Mail, Thunderbird)."""
    pieces = []
    def in_order(part):
        # A mixed part's children as shown: a nested mixed part stands as its own children.
        for child in part.iter_parts():
            if child.is_multipart() and child.get_content_subtype() == 'mixed':
                yield from in_order(child)
            else:
                yield child
    def walk(part):
        if part.is_multipart():
            run = None
            children = in_order(part) if part.get_content_subtype() == 'mixed' else part.iter_parts()
            for child in children:
                inline = (part.get_content_subtype() == 'mixed' and not child.is_multipart()
                          and child.get_content_maintype() == 'text' and child.get_content_disposition() != 'attachment')
                if inline:
                    run = (run or '') + shown(child)
                    continue
                if run is not None: pieces.append(run); run = None
                walk(child)
            if run is not None: pieces.append(run)
        elif part.get_content_type() == 'text/plain':
            pieces.append(shown(part))
    walk(message)
    return '\n'.join(pieces)

def view_as(message, last_fields, plain_alternative):
    """What a reader that chooses shows: each field given twice taken the first way (Python's
    own) or the last (GMime's); of a multipart/alternative the last part it can show, or its
    text/plain part; of a multipart/related its first part. Parts shown one after the other
    (nested mixed parts, the chosen alternative, the related root) join into one text while
    they are inline text parts; a text/plain part shown on its own stands alone."""
    if last_fields:
        for part in message.walk():
            for field in ('content-type', 'content-transfer-encoding', 'content-disposition'):
                values = part.get_all(field) or []
                if len(values) > 1 and not part.is_multipart():
                    del part[field]
                    part[field] = str(values[-1])
    def expand(part):
        if part.is_multipart():
            subtype = part.get_content_subtype()
            kids = list(part.iter_parts())
            if subtype == 'alternative':
                pick = None
                if plain_alternative:
                    pick = next((k for k in kids if k.get_content_type() == 'text/plain'), None)
                if pick is None:
                    pick = next((k for k in reversed(kids) if k.get_content_maintype() in ('text', 'multipart')), None)
                return expand(pick) if pick is not None else [None]
            if subtype == 'related':
                return expand(kids[0]) if kids else [None]
            if subtype in ('digest', 'encrypted'):
                return [None]
            return [piece for kid in kids for piece in expand(kid)]
        if part.get_content_maintype() == 'text':
            if part.get_content_disposition() != 'attachment':
                return [shown(part)]
            if part.get_content_type() == 'text/plain':
                return [None, shown(part), None]
        return [None]
    runs, run = [], None
    for piece in expand(message):
        if piece is None:
            if run is not None: runs.append(run)
            run = None
        else:
            run = (run or '') + piece
    if run is not None: runs.append(run)
    return '\n'.join(runs)

arguments = sys.argv[1:]
last_fields = '--last-fields' in arguments
plain_alternative = '--plain-alternative' in arguments
chooses = '--chooses' in arguments or last_fields or plain_alternative
for path in [a for a in arguments if not a.startswith('--')]:
    with open(path, 'rb') as f:
        message = email.message_from_bytes(f.read(), policy=policy.default)
        print(json.dumps(view_as(message, last_fields, plain_alternative) if chooses else view(message)))
