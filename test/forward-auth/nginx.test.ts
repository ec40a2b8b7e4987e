import { docsConfig, startNginx } from '../helpers/forward-auth-stack';
import { describeProxy } from '../helpers/forward-auth-proxy-suite';

describeProxy('nginx auth_request', (ports) => startNginx(docsConfig('nginx nginx.conf', ports), ports.proxy), {
  passesProblems: false,
});
