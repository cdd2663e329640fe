"""Transports: stdio, memory, Streamable HTTP, legacy HTTP+SSE and WebSocket.

Network transports import httpx / trio-websocket lazily, only when used.
"""
