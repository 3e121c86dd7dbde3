# SPDX-License-Identifier: GPL-2.0-or-later
"""A pool of libvirt "hosts" on one machine, for migration tests.

Each host is a libvirtd of its own, started (as root) in a private mount
namespace in which its own copies of /etc/libvirt, /run/libvirt,
/var/lib/libvirt, /var/log/libvirt and /var/cache/libvirt are bind-mounted,
and a copy of libvirt's cpu_map with (or without) the LWP features of
tools/libvirt.  The machine's own libvirt configuration, state and cpu_map
are never written; the only trace outside the pool's temporary directory is
an empty /run/libvirt mount point when the machine has none.

Hosts differ the way real ones do:
  - a host_uuid of their own (libvirt refuses "to migrate guest to the same
    host" otherwise);
  - migration_address and migration_host 127.0.0.2, 127.0.0.3, ... (libvirt
    rejects exactly 127.0.0.1) and a migration port range of their own;
  - the QEMU found at the pool's emulator path, the one every domain's
    <emulator> names: our build on most hosts, bind-mounted over it in the
    host's namespace otherwise (Debian's stock QEMU on an "old" host, or a
    QEMU whose CPU lacks an LWP feature).

Everything started here (libvirtd and the QEMU processes it spawned) is
stopped by pid when the pool is closed, at exit, or on SIGTERM.  Neither
systemd nor a running system libvirtd is needed: this runs in a bare chroot
(see mount_propagation() for what a chroot must allow).
"""
import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

LIBVIRT_DIRS = ('/etc/libvirt', '/run/libvirt', '/var/lib/libvirt', '/var/log/libvirt',
                '/var/cache/libvirt')
CPU_MAP = '/usr/share/libvirt/cpu_map'
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSTALL_CPU_MAP = os.path.join(ROOT, 'tools', 'libvirt', 'install-cpu-map.sh')
FIRST_MIGRATION_PORT = 49300        # above libvirt's default range 49152..49215
PORTS_PER_HOST = 16


class LibvirtError(RuntimeError):
    pass


def root_is_mount_point():
    """False inside a chroot whose root is a plain directory: there
    'unshare --propagation private' cannot change the root's propagation."""
    with open('/proc/self/mountinfo') as f:
        return any(line.split()[4] == '/' for line in f)


def chroot_parent_is_shared():
    """Whether a mount of the chroot's filesystem is shared in the initial
    mount namespace (/proc/1/mountinfo), i.e. whether mounts made on the
    chroot's root would propagate out of a new mount namespace.  None if
    the initial namespace's mounts cannot be seen."""
    dev = os.stat('/').st_dev
    majmin = '%d:%d' % (os.major(dev), os.minor(dev))
    seen = False
    try:
        with open('/proc/1/mountinfo') as f:
            for line in f:
                fields = line.split()
                if fields[2] != majmin:
                    continue
                seen = True
                optional = fields[6:fields.index('-')]
                if any(o.startswith('shared:') for o in optional):
                    return True
    except (OSError, ValueError):
        return None
    return False if seen else None


def mount_propagation():
    """How to create the hosts' mount namespaces: 'private' where the root
    is a mount point (the usual case, also a container); in a chroot whose
    root is a plain directory the root's propagation cannot be changed, and
    'unchanged' is safe only if the mount holding the chroot is not shared
    (else every bind mount would show up outside, and in the other hosts)."""
    if root_is_mount_point():
        return 'private'
    shared = chroot_parent_is_shared()
    if shared is False:
        return 'unchanged'
    raise LibvirtError(
        'in a chroot whose root is not a mount point, on a %s mount: the hosts\' bind '
        'mounts would propagate out of their namespaces.  Make the chroot\'s root a '
        'mount point first (mount --bind DIR DIR, or mount --make-rprivate on the '
        'mount holding it) or run in a container' %
        ('shared' if shared else 'possibly shared (/proc/1/mountinfo unreadable)'))


class Host:
    """One libvirtd with its own configuration and state, and its QEMU."""

    def __init__(self, pool, name, index, qemu=None, lwp_cpu_map=True, qemu_wrapper=None):
        self.pool = pool
        self.name = name
        self.dir = os.path.join(pool.dir, name)
        self.address = '127.0.0.%d' % (index + 2)
        self.ports = (FIRST_MIGRATION_PORT + index * PORTS_PER_HOST,
                      FIRST_MIGRATION_PORT + (index + 1) * PORTS_PER_HOST - 1)
        self.uuid = str(uuid.uuid4())
        self.qemu = qemu or pool.emulator      # the binary behind the pool's emulator path
        self.qemu_wrapper = qemu_wrapper        # a script put there instead; @REAL@ = self.qemu
        self.lwp_cpu_map = lwp_cpu_map
        self.socket = os.path.join(self.dir, 'run', 'libvirt-sock')
        self.uri = 'qemu+unix:///system?socket=' + self.socket
        self.proc = None

    def path(self, *parts):
        """A file of this host, as seen from outside its namespace."""
        return os.path.join(self.dir, *parts)

    def _write(self, rel, text):
        with open(self.path(rel), 'w') as f:
            f.write(text)

    def _prepare(self):
        for sub in ('etc', 'run', 'lib', 'log', 'cache', 'etc/qemu', 'lib/qemu', 'log/qemu',
                    'cache/qemu'):
            os.makedirs(self.path(sub), exist_ok=True)
        self._write('etc/libvirtd.conf', '\n'.join([
            'host_uuid = "%s"' % self.uuid,
            'auth_unix_rw = "none"',
            'auth_unix_ro = "none"',
            'unix_sock_group = "root"',
            'log_outputs = "3:file:/var/log/libvirt/libvirtd.log"',
            '']))
        self._write('etc/qemu.conf', '\n'.join([
            'security_driver = "none"',
            'dynamic_ownership = 0',
            'remember_owner = 0',
            'cgroup_controllers = [ ]',
            'namespaces = [ ]',
            'user = "root"',
            'group = "root"',
            # No virtlogd: QEMU's output goes straight to /var/log/libvirt/qemu.
            'stdio_handler = "file"',
            'migration_address = "%s"' % self.address,
            'migration_host = "%s"' % self.address,
            'migration_port_min = %d' % self.ports[0],
            'migration_port_max = %d' % self.ports[1],
            '']))
        self._write('etc/libvirt.conf', '')
        shutil.copytree(CPU_MAP, self.path('cpu_map'))
        if self.lwp_cpu_map:
            subprocess.run([INSTALL_CPU_MAP, self.path('cpu_map')], check=True)

    def _mounts(self):
        """Shell commands run in the host's namespace before libvirtd."""
        names = {'/etc/libvirt': 'etc', '/run/libvirt': 'run', '/var/lib/libvirt': 'lib',
                 '/var/log/libvirt': 'log', '/var/cache/libvirt': 'cache'}
        cmds = ['mount --bind %s %s' % (self.path(names[d]), d) for d in LIBVIRT_DIRS]
        cmds.append('mount --bind %s %s' % (self.path('cpu_map'), CPU_MAP))
        emulator = self.pool.emulator
        if self.qemu_wrapper:
            # The real binary stays reachable at a path of this host, next to
            # a qemu-bundle link so that it finds its firmware as before.
            real = self.path('qemu-real')
            open(real, 'w').close()
            os.symlink(os.path.join(os.path.dirname(self.qemu), 'qemu-bundle'),
                       self.path('qemu-bundle'))
            wrapper = self.path('qemu-wrapper')
            self._write('qemu-wrapper', self.qemu_wrapper.replace('@REAL@', real))
            os.chmod(wrapper, 0o755)
            cmds.append('mount --bind %s %s' % (self.qemu, real))
            cmds.append('mount --bind %s %s' % (wrapper, emulator))
        elif os.path.realpath(self.qemu) != os.path.realpath(emulator):
            cmds.append('mount --bind %s %s' % (self.qemu, emulator))
        return cmds

    def start(self):
        self._prepare()
        if not os.path.isdir('/run/libvirt'):
            os.makedirs('/run/libvirt')          # an empty mount point only
        script = ' && '.join(self._mounts() + [
            'exec libvirtd --config /etc/libvirt/libvirtd.conf --pid-file %s' %
            self.path('libvirtd.pid')])
        # unshare and sh exec: the pid of the Popen is libvirtd's.
        self.proc = subprocess.Popen(
            ['unshare', '--mount', '--propagation', self.pool.propagation, '--', 'sh', '-c',
             script],
            stdin=subprocess.DEVNULL, stdout=open(self.path('libvirtd.out'), 'w'),
            stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=180):
        deadline = time.time() + timeout
        while True:
            if self.proc.poll() is not None:
                raise LibvirtError('%s: libvirtd exited (%s): %s' % (
                    self.name, self.proc.returncode, self.log('libvirtd.out')[-2000:]))
            if os.path.exists(self.socket) and self.virsh('version').returncode == 0:
                return
            if time.time() > deadline:
                raise LibvirtError('%s: libvirtd did not answer' % self.name)
            time.sleep(0.1)

    def virsh(self, *args, check=False, timeout=300):
        p = subprocess.run(['virsh', '-c', self.uri] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=timeout)
        if check and p.returncode:
            raise LibvirtError('%s: virsh %s: %s' % (self.name, ' '.join(args),
                                                     p.stderr.strip()))
        return p

    def log(self, rel):
        try:
            with open(self.path(rel), errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def domain_log(self, dom):
        return self.log(os.path.join('log', 'qemu', dom + '.log'))

    def qemu_pids(self):
        """Pids of the QEMU processes this host's libvirtd runs."""
        pids = []
        run = self.path('run', 'qemu')
        for f in os.listdir(run) if os.path.isdir(run) else ():
            if f.endswith('.pid'):
                try:
                    pids.append(int(open(os.path.join(run, f)).read().strip()))
                except (OSError, ValueError):
                    pass
        return pids

    def stop(self):
        if self.proc is None:
            return
        qemus = self.qemu_pids()
        if self.proc.poll() is None:
            for dom in self.virsh('list', '--name', timeout=30).stdout.split():
                self.virsh('destroy', dom, timeout=30)
        qemus += self.qemu_pids()
        stop_pid(self.proc.pid, self.proc)
        for pid in set(qemus):
            stop_pid(pid)
        self.proc = None


def stop_pid(pid, popen=None):
    """SIGTERM, then SIGKILL after 10 s; only @pid itself."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + 10
    while time.time() < deadline:
        if popen is not None:
            if popen.poll() is not None:
                return
        else:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if popen is not None:
        popen.wait()


class Pool:
    """Hosts that share the emulator path every domain's <emulator> names.

    pool = Pool(emulator=OUR_QEMU)
    a = pool.add('a'); b = pool.add('b'); c = pool.add('c', qemu=STOCK, lwp_cpu_map=False)
    pool.start()   ...   pool.close()
    """

    def __init__(self, emulator):
        if os.geteuid() != 0:
            raise LibvirtError('libvirt hosts need root (mount namespaces, libvirtd)')
        self.propagation = mount_propagation()
        self.emulator = os.path.abspath(emulator)
        self.dir = tempfile.mkdtemp(prefix='lwp-libvirt-pool-')
        os.chmod(self.dir, 0o755)
        self.hosts = []
        atexit.register(self.close)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))    # runs atexit

    def add(self, name, **kw):
        host = Host(self, name, len(self.hosts), **kw)
        self.hosts.append(host)
        return host

    def start(self):
        for h in self.hosts:
            h.start()
        for h in self.hosts:
            h.wait_ready()

    def close(self):
        for h in self.hosts:
            h.stop()
        if self.dir and not os.environ.get('QEMU_LWP_KEEP_POOL'):
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None
