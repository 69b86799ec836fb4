# A pure-python wheel, made the way a build backend would (a zip with the package and
# METADATA, WHEEL and RECORD): tinypkg 1.0, whose GREETING is the second argument.
# Usage: make_tinypkg_wheel.py DIR GREETING (writes DIR/tinypkg-1.0-py3-none-any.whl).
import base64, hashlib, sys, zipfile
out, greeting = sys.argv[1], sys.argv[2]
files = {
    'tinypkg/__init__.py': 'GREETING = %r\n' % greeting,
    'tinypkg-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n',
    'tinypkg-1.0.dist-info/WHEEL':
        'Wheel-Version: 1.0\nGenerator: zygo-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
}
def digest(text):
    raw = hashlib.sha256(text.encode()).digest()
    return 'sha256=%s,%d' % (base64.urlsafe_b64encode(raw).rstrip(b'=').decode(), len(text))
record = ''.join('%s,%s\n' % (name, digest(text)) for name, text in files.items())
with zipfile.ZipFile(out + '/tinypkg-1.0-py3-none-any.whl', 'w') as wheel:
    for name, text in files.items():
        wheel.writestr(name, text)
    wheel.writestr('tinypkg-1.0.dist-info/RECORD', record + 'tinypkg-1.0.dist-info/RECORD,,\n')
