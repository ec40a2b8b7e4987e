import { docsConfig, startCaddy } from '../helpers/forward-auth-stack';
import { describeProxy } from '../helpers/forward-auth-proxy-suite';

describeProxy('Caddy forward_auth', (ports) => startCaddy(docsConfig('caddyfile Caddyfile', ports), ports.proxy));
