// oidc_provider.mjs - a real authorization server for the auth interop tests.
//
// `oidc-provider` (npm, a certified OpenID provider, pinned in scripts/peers/package.json)
// on 127.0.0.1, configured the way an MCP deployment uses it:
//   * Dynamic Client Registration (open, POST /reg) for the authorization code flow;
//   * a pre-registered confidential client `svc` / `svc-secret` (client_secret_basic) for
//     the client credentials grant;
//   * PKCE required for every client (S256 only);
//   * refresh tokens for `offline_access` (rotated on every use);
//   * resource indicators (RFC 8707): any `http://127.0.0.1:<port>/mcp` is a resource
//     server; its access tokens are JWTs (RFC 9068) whose `aud` is that URL, with scope
//     `mcp:tools`;
//   * the device authorization grant (RFC 8628), DPoP (RFC 9449), introspection (RFC 7662),
//     revocation;
//   * the development interactions (a login form that takes any user name and password,
//     then a consent form), which the tests drive with plain HTTP.
//
// Environment:
//   OIDC_PROVIDER_MODULE  path of oidc-provider's lib/index.js (ESM needs a path here:
//                         the package lives in .peers/node/node_modules)
//   PORT                  the port to listen on (127.0.0.1 only)
//   ISSUER                the issuer to announce (default http://127.0.0.1:PORT); a
//                         different one makes a misconfigured server for the tests
//   ACCESS_TOKEN_TTL      access token lifetime in seconds (default 300)
// Prints `TRIO_MCP_PEER_LISTENING 127.0.0.1:<port>` on stderr once it listens.

import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';

const { default: Provider, errors } = await import(
  pathToFileURL(process.env.OIDC_PROVIDER_MODULE).href
);

const host = '127.0.0.1';
const port = Number(process.env.PORT || 0);
const ttl = Number(process.env.ACCESS_TOKEN_TTL || 300);
const MCP_RESOURCE = /^http:\/\/127\.0\.0\.1:\d+\/mcp$/;

function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: 'test-rs256', use: 'sig', alg: 'RS256' };
}

const configuration = {
  clients: [
    {
      client_id: 'svc',
      client_secret: 'svc-secret',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [signingKey()] },
  cookies: { keys: ['trio-mcp-interop-only'] },
  scopes: ['openid', 'offline_access'],
  pkce: { required: () => true },
  rotateRefreshToken: true,
  ttl: {
    AccessToken: ttl,
    ClientCredentials: ttl,
    AuthorizationCode: 60,
    DeviceCode: 120,
    Grant: 3600,
    Interaction: 600,
    RefreshToken: 3600,
    Session: 3600,
  },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    deviceFlow: { enabled: true },
    dPoP: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        if (!MCP_RESOURCE.test(resource)) {
          throw new errors.InvalidTarget(`${resource} is not a resource server here`);
        }
        return {
          scope: 'mcp:tools',
          audience: resource,
          accessTokenTTL: ttl,
          accessTokenFormat: 'jwt',
        };
      },
    },
  },
  async findAccount(_ctx, id) {
    return { accountId: id, async claims() { return { sub: id }; } };
  },
};

const issuer = process.env.ISSUER || `http://${host}:${port}`;
const provider = new Provider(issuer, configuration);
const server = createServer(provider.callback());
server.listen(port, host, () => {
  const address = server.address();
  process.stderr.write(`TRIO_MCP_PEER_LISTENING ${address.address}:${address.port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
