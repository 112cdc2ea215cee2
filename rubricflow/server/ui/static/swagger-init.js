// The API's interactive documentation at /docs: Swagger UI, vendored (static/vendor), on
// this server's own OpenAPI document. A file, not an inline script, so no CDN and no
// inline code is needed.
window.addEventListener("DOMContentLoaded", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
  });
});
