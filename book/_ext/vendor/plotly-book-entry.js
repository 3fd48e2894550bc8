'use strict';
// plotly.js for the book: its core (scatter, the layout components) with bar and heatmap, the only trace types the
// book's static figures draw
var Plotly = require('plotly.js/lib/core');  // npm install plotly.js@<version>: see book/_ext/plotly_asset.py
Plotly.register([require('plotly.js/lib/bar'), require('plotly.js/lib/heatmap')]);
module.exports = Plotly;
