/*
 * api_openapi.h - the API's own description: GET /api/v1/openapi.json (the
 * OpenAPI 3.1 document docs/openapi.json, embedded at build time) and the
 * API reference page (Swagger UI from npm, docs/api/, served from
 * api_docs_dir; never from a CDN).
 *
 * Thread-safety: the handlers are reentrant; the document is read-only.
 */
#ifndef TY_SERVER_API_OPENAPI_H
#define TY_SERVER_API_OPENAPI_H

#include <stddef.h>

#include "srv.h"

/* The embedded document (borrowed, static) and its length in bytes. */
const char *api_openapi_document(size_t *len /* out */);

/* GET /api/v1/openapi.json */
enum rc api_openapi(struct srv_req *req);

/* GET /api/v1/docs: the page; GET /api/v1/docs/{file}: one of its files
 * (a fixed list, nothing else of api_docs_dir is reachable). 404 when
 * api_docs_dir is not set or the file is not installed (npm ci). */
enum rc api_docs_page(struct srv_req *req);
enum rc api_docs_file(struct srv_req *req);

#endif
