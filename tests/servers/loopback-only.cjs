// Preloaded with `node --require` in front of an MCP server that listens on
// every interface (server-everything calls `app.listen(PORT)` with no host).
// Forces every TCP listen onto 127.0.0.1 so that only this machine's loopback
// can reach the server, and announces the bound address on stderr as
//   TRIO_MCP_PEER_LISTENING 127.0.0.1:<port>
// so a test can find the port (PORT=0 lets the kernel choose a free one).
"use strict";
const net = require("node:net");

const LOOPBACK = "127.0.0.1";
const originalListen = net.Server.prototype.listen;

net.Server.prototype.listen = function listenOnLoopback(...args) {
    const first = args[0];
    if (first !== null && typeof first === "object" && !Array.isArray(first)) {
        // listen(options[, cb]): keep unix-socket/handle options as they are.
        if (first.path === undefined && first.handle === undefined && first.fd === undefined) {
            args[0] = { ...first, host: LOOPBACK };
        }
    } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
        // listen(port[, host][, backlog][, cb]): drop any host given, use loopback.
        const port = Number(first);
        const rest = args.slice(1).filter((a) => typeof a !== "string");
        args = [port, LOOPBACK, ...rest];
    } else if (first === undefined || typeof first === "function") {
        // listen() / listen(cb): a random port, on loopback.
        args = [0, LOOPBACK, ...args.filter((a) => typeof a === "function")];
    }
    this.once("listening", () => {
        const addr = this.address();
        if (addr && typeof addr === "object") {
            process.stderr.write(`TRIO_MCP_PEER_LISTENING ${addr.address}:${addr.port}\n`);
        }
    });
    return originalListen.apply(this, args);
};
