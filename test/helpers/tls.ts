import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A throw-away certificate authority and a server certificate it signed for `<domain>` and `*.<domain>`. */
export interface TestCertificates {
  dir: string;
  caCertPath: string;
  certPath: string;
  keyPath: string;
  remove(): void;
}

/**
 * Makes a private CA and a server certificate with the `openssl` command, in a fresh temporary directory. Node
 * trusts the CA through NODE_EXTRA_CA_CERTS (given to the process that makes TLS calls), so nothing turns TLS
 * verification off.
 */
export function makeTestCertificates(domain: string): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'sso-tls-'));
  const path = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    path('ca.key'),
    '-out',
    path('ca.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=express-sso-kit test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', path('server.key'), '-out', path('server.csr'), '-subj', `/CN=*.${domain}`);
  writeFileSync(
    path('server.ext'),
    `subjectAltName=DNS:${domain},DNS:*.${domain}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    path('server.csr'),
    '-CA',
    path('ca.pem'),
    '-CAkey',
    path('ca.key'),
    '-CAcreateserial',
    '-out',
    path('server.pem'),
    '-days',
    '1',
    '-extfile',
    path('server.ext'),
  );
  return {
    dir,
    caCertPath: path('ca.pem'),
    certPath: path('server.pem'),
    keyPath: path('server.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
