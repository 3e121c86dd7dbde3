# SPDX-License-Identifier: GPL-2.0-or-later
"""The few GDB remote serial protocol packets the guest tests send to QEMU's
gdbstub (test_watchpoint.py, test_latitude_migrate.py), and guest symbols."""
import socket
import subprocess
import time


def symbol_address(elf, name):
    out = subprocess.run(['nm', elf], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2] == name:
            return int(fields[0], 16)
    raise SystemExit('FAIL: no symbol %s in %s' % (name, elf))


class Rsp:
    """The few GDB remote serial protocol packets this test sends."""

    def __init__(self, path, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.sock.settimeout(timeout)
        self.buf = b''

    def send(self, payload):
        data = payload.encode()
        self.sock.sendall(b'$%s#%02x' % (data, sum(data) & 0xff))

    def reply(self):
        while True:
            start = self.buf.find(b'$')
            end = self.buf.find(b'#', start + 1) if start >= 0 else -1
            if start >= 0 and end >= 0 and len(self.buf) >= end + 3:
                payload = self.buf[start + 1:end].decode()
                self.buf = self.buf[end + 3:]
                self.sock.sendall(b'+')
                return payload
            chunk = self.sock.recv(4096)
            if not chunk:
                raise SystemExit('FAIL: the gdbstub connection closed (QEMU died?)')
            self.buf += chunk

    def command(self, payload):
        self.send(payload)
        return self.reply()
